// Package fsx opens and reads the files a user names (a budget file, a
// model directory's files, a data file, a JSON spec or report) without ever
// blocking on something that is not a regular file, and reads them with a
// size bound.
//
// Open refuses anything but a regular file (a FIFO, a device such as
// /dev/zero, a socket, a directory) with an error wrapping ErrNotRegular. It
// opens the path with O_NONBLOCK, so that opening a FIFO with no writer
// returns at once instead of waiting in open(2), checks the opened
// descriptor with fstat (the file checked is the file read: no race with a
// rename between a stat and the open), and then clears O_NONBLOCK. A
// symbolic link to a regular file is followed and accepted. ReadFile reads
// at most a given number of bytes and refuses a larger file with an error
// wrapping ErrTooLarge, before reading it when its size is known.
package fsx
