"""The class and its calendar: who handed in what (`submissions`, `roster`), when it was due
(`late`), and what they were given (`stubs`, `release`)."""
