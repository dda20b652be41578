//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package features

import "os"

// lockWriting does nothing without flock(2): the leftovers of a write are
// judged by age alone (unlockedStaleAfter).
func lockWriting(*os.File) {}

// probeLock cannot tell without flock(2).
func probeLock(string) lockState { return unknown }
