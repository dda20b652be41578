package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/dptune/dptune/internal/textsafe"
	"github.com/dptune/dptune/job"
)

func newPredictCmd() *cobra.Command {
	var r job.PredictRequest
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "predict --model DIR [--json] (PATH… | --files-from LIST)",
		Short: "Label image files or directories with a saved model",
		Long: `predict labels images with a model saved by dptune train or tune. Each PATH
is a PNG, JPEG, GIF or TIFF file, or a directory whose .png, .jpg, .jpeg,
.gif, .tif and .tiff files are read (any depth, in lexical order). Images are read as the model's training
data was: converted to its channels, resized bilinearly to its input size and
normalised with the constants saved with it. It prints each image's label (the
class name from the dataset or the image folder) and its probability, or with
--json one JSON array of {"path", "label", "index", "probabilities"}.

--files-from LIST reads the paths from the file LIST instead, one a line
(empty lines skipped; with --null, each ended by a NUL byte, as find -print0
writes them), "-" for standard input; the list is read as the images are,
never held whole.

Images are read and labelled a batch at a time: at most 64 MiB of float32
(pixels at the model's input size, features, logits; one image's alone may
be more) and 8 MiB of file names. Each batch's lines are printed, in input
order, before the next is read, so memory grows neither with the number of
images nor with the model's input size (a batch holds fewer images, at
least one). PATHs, and a LIST that is a regular file, are read twice:
checked and counted first, so that a missing path or a directory without
images is refused before any image is read; a LIST read from a pipe is
checked as it comes. The progress goes to standard error: a live bar on a
terminal, else one line per batch (images so far, time, images per second).

An image that cannot be read ends the command (exit 2) once every image
before it is printed; with --json the array is then left unclosed, so that no
JSON reader takes it for the whole answer (closing it with "]" gives the
images before the failure). An empty LIST prints nothing, or "[]" with --json.

A file name that is not valid UTF-8 keeps its exact bytes in "path_bytes"
(base64) beside "path", which holds the name as Python's os.fsdecode reads it
(surrogateescape: each undecodable byte b as the escape \udcXX of U+DC00 + b),
so that Python's json.load gives a str that open() and os.fsencode() take for
that very file; other readers should use "path_bytes" when it is present.`,
		Example: `  dptune predict --model out/mnist digit.png
  dptune predict --model out/photos --json photos/test
  find photos -name '*.jpg' -print0 | dptune predict --model out/photos --files-from - --null`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, paths []string) error {
			r.Paths, r.Stdin = paths, cmd.InOrStdin()
			c, err := r.Config()
			if err != nil {
				return err
			}
			return predict(cmd, c, asJSON)
		},
	}
	cmd.Flags().StringVar(&r.Model, "model", "", "directory written by dptune train or tune")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array of {path, label, index, probabilities} (and path_bytes for a file name that is not UTF-8)")
	cmd.Flags().StringVar(&r.FilesFrom, "files-from", "", `read the paths from this file, one a line ("-": standard input)`)
	cmd.Flags().BoolVar(&r.Null, "null", false, "the --files-from list's paths each end with a NUL byte, not a newline (find -print0)")
	return cmd
}

// predict runs job.PredictStream as c says, printing each prediction as
// a line or an element of one JSON array, each batch flushed once
// printed, and the progress on standard error.
func predict(cmd *cobra.Command, c job.PredictConfig, asJSON bool) error {
	b := newPredictBar(cmd.ErrOrStderr())
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 64<<10)
	labelled, emitted := 0, 0
	c.Progress = func(p job.PredictProgress) {
		b.update(p)
		labelled = p.Labelled
	}
	err := job.PredictStream(cmd.Context(), c, func(p job.Prediction) error {
		emitted++
		if !asJSON {
			fmt.Fprintf(out, "%s\t%s\t%.4f\n", textsafe.Quoted(p.Path), textsafe.Quoted(p.Label), p.Probabilities[p.Index])
		} else {
			// One JSON array, an element per image as it is labelled.
			js, err := json.MarshalIndent(p, "  ", "  ")
			if err != nil {
				return err
			}
			sep := ",\n  "
			if emitted == 1 {
				sep = "[\n  "
			}
			out.WriteString(sep)
			out.Write(js)
		}
		if emitted == labelled { // the batch's last: out it goes
			return out.Flush()
		}
		return nil
	})
	b.close()
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		// The predictions so far are out; a JSON array is left open, so
		// that no reader takes it for the whole answer.
		return err
	}
	if asJSON {
		end := "\n]\n"
		if emitted == 0 {
			end = "[]\n"
		}
		_, err = io.WriteString(cmd.OutOrStdout(), end)
	}
	return err
}

// predictBar shows predict's progress on w: on a terminal, a live bar of
// the images read (a counter when their number is not known first);
// elsewhere one line per batch labelled, with the images so far, the time
// and the images per second since the command began.
type predictBar struct {
	w     io.Writer
	term  bool
	pb    *progressbar.ProgressBar
	start time.Time
	last  job.PredictProgress
}

func newPredictBar(w io.Writer) *predictBar {
	return &predictBar{w: w, term: isTerminal(w), start: time.Now()}
}

// update shows p.
func (b *predictBar) update(p job.PredictProgress) {
	switch {
	case b.term:
		if b.pb == nil {
			b.pb = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(b.w), progressbar.OptionSetDescription("images"),
				progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("images"),
				progressbar.OptionSetPredictTime(p.Total >= 0), progressbar.OptionSetWidth(25),
				progressbar.OptionThrottle(500*time.Millisecond), progressbar.OptionShowElapsedTimeOnFinish())
		}
		if p.Read != b.last.Read {
			_ = b.pb.Set(p.Read)
		}
	case p.Labelled != b.last.Labelled:
		t := time.Since(b.start)
		of := ""
		if p.Total >= 0 {
			of = fmt.Sprintf("/%d", p.Total)
		}
		fmt.Fprintf(b.w, "images  (%d%s) [%s, %.0f images/s]\n", p.Labelled, of, t.Round(100*time.Millisecond), float64(p.Labelled)/max(t.Seconds(), 1e-9))
	}
	b.last = p
}

// close ends a live bar's line.
func (b *predictBar) close() {
	if b.pb != nil {
		fmt.Fprintln(b.w)
	}
}
