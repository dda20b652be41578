package job

import (
	"context"
	"errors"

	"github.com/dptune/dptune/runner"
)

// releasedFailure is what a failed tuning's release says of err, its
// error (the Failed field of its report): a fixed string for err's class,
// which names at most the public dataset name. Never err's text: a task's
// ID holds its run index (of a random-stop tuning, a lower bound on K,
// which stays hidden; the runs are submitted at once and which one fails
// first is chance), and a worker's error text may hold its paths and
// counts. The full error goes back to the caller alone.
func releasedFailure(err error, dataset string) string {
	var task *runner.TaskError
	switch {
	case errors.Is(err, runner.ErrDataDiffers):
		return "a task was refused: a worker's copy of dataset " + dataset + " differs from the curator's"
	case errors.As(err, &task) && task.Remote:
		return "a training job failed on a worker"
	case errors.As(err, &task):
		return "a training job failed"
	}
	return "the tuning failed after touching the data"
}

// failedTraining is what a failed training run's release says of its
// failure (TrainReport.Failed): a fixed string, never the error's text.
const failedTraining = "the training failed after touching the data"

// failedVote is what a failed vote's release says of err
// (VoteFailedReport.Error): a fixed sentence for its class, never err's
// text, which may carry a client's own error (its data's) or the round it
// failed in; the full error goes back to the caller alone.
func failedVote(err error) string {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "the vote was interrupted after votes were summed"
	}
	return "the vote failed after votes were summed"
}
