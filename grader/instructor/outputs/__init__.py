"""What a batch writes out: per-student results and feedback and the gradebook (`gradebook`,
with `adjustments` and `sections`), the HTML report (`report_html`, `outcomes`), each
student's page (`student_page`), the LMS import file (`lms`) and the GitHub Actions workflow
(`actions`)."""
