// Package temporalrunner runs dptune's tasks (package runner) on Temporal
// workers: one workflow (Invocation) per invocation of a tuning, a bench or
// an audit, one activity per task, on any number of `dptune worker`
// processes that share a task queue and the curator's key file.
//
// # Threat model
//
// The curator's process and its workers (which hold the key file and read
// the data) are trusted; the Temporal server, its database, its UI and the
// network to it are not: the server may be malicious.
//
//   - It sees only ciphertext. Every payload — the workflow's start, the
//     submit and close signals, each task's input and output, the results
//     and key queries' arguments and answers, heartbeats — and the text of
//     every failure is sealed with AES-256-GCM under the curator's key
//     (Codec, NewDataConverter, NewFailureConverter). What it does see is
//     the shape of the work: the workflow ID (the command, the output
//     directory and a digest of the settings), how many tasks, their IDs and
//     kinds, when they ran — for a random-stop tuning, the number of runs K.
//   - It cannot move a payload. Each payload's associated data binds the
//     workflow ID, the run ID (except the start's, sealed before the run is
//     named) and its role (the Go type it carries: start, submit, job input,
//     job output, results answer, key answer, …), so a payload replayed into
//     another workflow, run or role fails to open. Failures are sealed to
//     their role and the key only (the SDK converts them without a context).
//   - It cannot inject plaintext. A payload that is not sealed is refused
//     (ErrUnsealed), a signal that does not open is dropped, and a failure
//     whose text is not sealed (the server's own, e.g. a timeout, or a
//     forged one) reaches the curator as "not sealed", never with its text.
//   - It cannot choose or replay the invocation key. The key is 256 bits
//     from crypto/rand, drawn by the curator and wrapped (Codec.WrapKey) by a
//     key derived from the curator's key file, bound to the workflow ID and
//     the settings' digest; the workflow only stores and answers the blob.
//     Open accepts the blob the workflow answers only if it unwraps for this
//     workflow and these settings and the curator's own record (beside its
//     key file) lists it as started and not closed: a key the server made,
//     another invocation's or another curator's, or that of an invocation
//     Close has ended, is refused (ErrForeignKey), and only a key on that
//     record makes Resumed true — which is what lets a tuning take over its
//     own budget reservation and repeat its own draws. Every keyed stream
//     (the number of runs, the candidates, the validation split's key, each
//     run's sampling and noise, the doubling tuner's part runs and final
//     run) derives from that key by HMAC-SHA256 (randsrc.Key).
//
// What the server can still do is deny service: refuse or drop the
// workflow, never schedule a task, drop or delay activities, fail them, or
// answer queries with errors. None of this spends privacy the ledger does
// not count: the budget is reserved at its worst case before any task runs,
// a task's noise is fixed by its sealed input (a retried attempt repeats the
// same run, one charge however many attempts), and the release and its
// ledger are built only from completed results that open under the
// curator's key — a dropped or failed task makes the invocation fail or wait,
// never release something computed otherwise. Delays and which tasks fail
// are visible to the server, as is the number of tasks; none of them carries
// a score.
package temporalrunner
