from grader.cli import main

main()
