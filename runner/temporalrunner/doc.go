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
//     another workflow, run or role fails to open. Every task output of a run
//     has the same binding, so a task's output also carries the task's ID and
//     SHA-256 of its kind and input (the activity binds it, Runner.Run
//     checks it against the task it scheduled before using it): an output the
//     server copied or swapped between tasks of the same run — the doubling
//     tuner's part runs, the runs of a random-stop tuning — is refused and
//     the invocation fails, releasing nothing from it. Failures are sealed
//     to their role and the key only (the SDK converts them without a
//     context): a moved failure can only fail a task.
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
//     record as opened makes Resumed true (the key of an Open that failed
//     before it completed is taken, but nothing ran or was reserved under
//     it, so it is not a resume). Resumed lets a tuning repeat its own
//     draws and take over its own budget reservation: the reservation's
//     label carries a tag of the key, so it is never another run's
//     reservation with the same command and output directory. Every keyed
//     stream
//     (the number of runs, the candidates, the validation split's key, each
//     run's sampling and noise, the doubling tuner's part runs and final
//     run) derives from that key by HMAC-SHA256 (randsrc.Key).
//
// What the server can still do is deny service: refuse or drop the
// workflow, never schedule a task, drop or delay activities, fail them, move
// outputs or failures between tasks (refused, as above), replay an earlier
// results answer (refused: each answer names the position it answers), or
// answer queries with errors. None of this spends privacy the ledger does not
// count: the budget is reserved at its worst case before any task runs, a
// task's noise is fixed by its sealed input (a retried attempt repeats the
// same run, one charge however many attempts), and the release and its
// ledger are built only from completed results that open under the
// curator's key, each bound to its task — a dropped, failed or moved task
// makes the invocation fail or wait, never release something computed
// otherwise.
//
// What the server sees is not private, and it is not nothing: the number of
// tasks, their kinds and when each starts, heartbeats and ends. For a
// random-stop or GP tuning the number of tasks is K, the number of runs,
// which the guarantee assumes stays hidden; when the candidates differ in
// batch size or epochs, each task's duration and step heartbeats also show
// which kind of candidate it trained, which for GP depends on the
// unreleased scores; and which tasks fail, and when, may depend on the
// data. So for those tuners the Temporal server, its
// database, its UI and its logs are curator-side, like the --diagnostics
// file: whoever runs them must not publish what they show. (The doubling
// tuner's number of part runs is data-dependent too, but its guarantee
// counts the cap, not the realised number.)
package temporalrunner
