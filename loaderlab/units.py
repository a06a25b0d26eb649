"""Units of size shared by the instruments, the checkers and the doctor."""

MB = 1024 * 1024  # bytes in one MB as the course prints it (a mebibyte: what ps and psutil count)
