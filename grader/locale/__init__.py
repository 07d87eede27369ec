"""Message catalogs (gettext .po sources, compiled .mo) and the tool that keeps them."""
