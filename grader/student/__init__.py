"""What `grader check` and `grader watch` do for a student beyond grading: which file is graded
when none is named (a `.py` file or a notebook, in any language), the folder a notebook is
graded in, results kept between checks, and the flags `grader batch` would raise."""
