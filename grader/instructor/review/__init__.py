"""Review by hand: written answers scored on a sheet (`written`), pairs of alike submissions
for the instructor's eyes (`similarity`), answers in a kit found by what they do
(`answer_probe`)."""
