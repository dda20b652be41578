package main

import (
	"github.com/spf13/pflag"
)

// addResumeFlag adds tune's --resume.
func addResumeFlag(fl *pflag.FlagSet, resume *string) {
	fl.StringVar(resume, "resume", "", "continue the unfinished tuning whose --out was DIR (killed, even with SIGKILL, or interrupted; on the local runner) with the settings, key and finished runs it kept in DIR-curator/tuning, ending as it would have; takes no other flag (a --runner temporal tuning resumes when its command is run again)")
}
