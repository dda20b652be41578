// Package fsx opens and reads the files a user names (a budget file, a
// model directory's files, a data file, a JSON spec or report) without ever
// blocking on something that is not a regular file, and reads them with a
// size bound; and it writes the files dptune puts in an output directory
// so that nothing planted there can redirect the write.
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
//
// WriteFileAtomic writes a file through a temporary file that os.CreateTemp
// makes in the destination's directory (O_EXCL under a random name, so a
// symbolic link planted at a predictable name such as path.tmp is never
// opened), fsyncs it, sets its mode and renames it over the destination:
// the rename replaces a symbolic link at the destination instead of writing
// through it, and a reader sees the old file or the whole new one.
// WritePathAtomic does the same for a writer that takes a file name (a
// plot's Save), giving it a name inside a fresh private directory.
//
// TryLock takes an exclusive flock(2) without waiting, for a resource two
// processes must never use at once (a training run's checkpoint).
package fsx
