// Package tuningpage draws a private tuning in pictures: one call, Write,
// turns the report.json a tuning released into tuning.html beside it, and
// the NOT PRIVATE diagnostics the curator asked for (dptune tune
// --diagnostics) into a second page in the curator directory.
//
//	spec.Diagnostics = true // NOT PRIVATE: every run, for the curator's page
//	rel, diag, err := job.Tune(ctx, spec)
//	err = rel.Save("out/tune")
//	w, err := tuningpage.Write(tuningpage.Pages{Release: "out/tune", Space: spec.Space, Diagnostics: diag})
//	// w.Release is out/tune/tuning.html, w.Curator out/tune-curator/tuning-not-private.html
//
// # What the release page shows
//
// tuning.html is built from report.json and the public search space alone,
// so it can show nothing the release does not: the selected candidate
// marked within the space (one strip per dimension, and the learning rate
// against the clipping norm when the space varies both), its released
// score (a private score is a noisy count), the ε of each component of the
// ledger beside the total, and the published default the tuning is measured
// against, where report.json has one. It never shows the number of runs
// K, another run's score, a timing or a count of the private data: no
// tuner's report.json releases them. (Grid search's ledger pays for every
// run's noisy score, but its report.json releases only the selected run's,
// so the page shows only that one.)
//
// # What the curator page shows
//
// tuning-not-private.html, written only when Pages.Diagnostics holds the
// tuning's diagnostics, shows every run: K, each run's candidate and score, in
// run order and against each dimension of the space. Random-stop, DP-HyPO
// and the recommended tuner's guarantees need exactly this hidden, so the
// page is labelled NOT PRIVATE in its title and its body, and lives in the
// curator directory (job.CuratorDir: OUT-curator beside the release OUT,
// mode 0600 in a 0700 directory), never in the release.
//
// # Self-contained
//
// Both pages are single HTML files: the figures are gonum/plot drawings
// inlined as SVG, with the font they were laid out in (Liberation Serif)
// embedded once in the page's style, so that they open without any network
// access and look the same on every machine.
package tuningpage
