// Package budget is the curator's privacy budget for one dataset, spanning
// runs: a file that composes every release made from the dataset (tuning
// runs, training runs, noisy scores) and refuses a run that would take the
// total past its cap (ε, δ). ε is in nats throughout.
//
// Re-running a tuner or a training on the same data composes, and the
// parameters of each run are usually chosen after looking at earlier
// results. The file is therefore an RDP privacy filter (Rogers, Roth,
// Ullman & Vadhan 2016, "Privacy Odometers and Filters: Pay-as-you-Go
// Composition", for the notion of a filter; Feldman & Zrnic 2021,
// "Individual Privacy Accounting via a Rényi Filter", for the Rényi filter
// at a fixed order), which stays valid when each run's parameters depend
// on everything released before it.
//
// # Use
//
// The curator creates one file per dataset with Init (dptune budget init
// FILE --epsilon E --delta D --dataset NAME) and passes it to every command
// that touches the private data. Such a command calls Reserve with the
// worst-case ledger of what it is about to run before it touches the data,
// runs, and calls Commit with the ledger of what actually ran. Load and
// Budget.Show read the file for printing. Load reads only a regular file of
// at most MaxFileBytes (a FIFO or a device is refused without blocking);
// Reserve refuses a file of another dataset (ErrOtherDataset).
//
// # The filter
//
// The file fixes m RDP orders Λ = {α_1, …, α_m} when it is created
// (DefaultOrders at that time; they are stored in the file, so later code
// changes cannot alter an existing file's meaning). Let ρ_j be the sum over
// the file's releases of each release's RDP at α_j (a release's own events
// composed by Mironov 2017, Proposition 1). The filter's total is
//
//	ε_filter = min_j  ρ_j + log((α_j−1)/α_j) − (log(δ/m) + log α_j)/(α_j − 1),
//
// clamped at 0 from below, and 0 when nothing was released (FilterEpsilon).
// A release is admitted only if ε_filter including it is at most the cap ε.
// The guarantee of the whole sequence of admitted releases is then
// (ε, δ)-DP with the cap ε — not with the realised ε_filter, which is a
// random quantity when runs are chosen adaptively (a filter is not an
// odometer; Rogers et al. 2016 show the two differ). Budget.Spent reports
// how much of the cap the filter has used.
//
// # Why the filter is valid under full adaptivity
//
// Fix neighbouring datasets D, D′ (in either order). Let the releases (or, more finely, the
// steps of all runs in the order they executed) be mechanisms M_1, M_2, …,
// where M_t and its RDP curve ρ_t(·) may be chosen from everything output
// before it (ρ_t is predictable), and let ℓ_t be the privacy loss
// log(dP_t/dQ_t) of M_t's output given the past, under D. Write
// L_T = Σ_{t≤T} ℓ_t for the loss of the whole transcript and
// R_T(α) = Σ_{t≤T} ρ_t(α).
//
// Step 1 (a supermartingale per order; Feldman & Zrnic 2021). For each
// fixed α > 1, RDP of M_t at α means E_P[exp((α−1)ℓ_t) | past] =
// exp((α−1)·D_α(P_t‖Q_t)) ≤ exp((α−1)ρ_t(α)), so
//
//	Z_T(α) = exp((α−1)(L_T − R_T(α)))
//
// is a nonnegative supermartingale with Z_0 = 1, and for the stopping time
// T at which the sequence ends (whether another mechanism runs is decided
// before it runs), optional stopping (with Fatou's lemma if T is unbounded)
// gives E[Z_T(α)] ≤ 1. This holds for every α at once, whatever rule chose
// the mechanisms.
//
// Step 2 (the filter's invariant). Let B_j be the value with
//
//	R(α_j) ≤ B_j  ⇔  R(α_j) + log((α_j−1)/α_j) − (log(δ/m) + log α_j)/(α_j−1) ≤ ε,
//
// i.e. B_j = ε − log((α_j−1)/α_j) + (log(δ/m) + log α_j)/(α_j−1). The
// filter admits a release only if some order j has (totals with it)
// ≤ B_j. Each admission check includes every release admitted earlier, and
// the condition is monotone (smaller totals keep it true), so at the end
// some order j has R_T(α_j) ≤ B_j on every transcript (R_T counts only the
// steps that ran, which is at most what the file records). (A Commit may lower a
// release's curve to what actually ran; that keeps the invariant as long as
// the actual curve is at most the reserved one at every order, which Commit
// checks.) Let A_j be the event that j is the first such order; the A_j
// partition the outcomes. (The one exception is a sequence whose every
// curve is 0, for which ε_filter is 0 by definition: then every P_t = Q_t,
// L_T = 0 and δ_total = 0 below.)
//
// Step 3 (the pointwise conversion inequality behind Balle et al. 2020,
// Theorem 21, and Canonne, Kamath & Steinke 2020). For α > 1 and every
// real x,
//
//	(1 − e^{−x})_+ ≤ c_α · e^{(α−1)x},   c_α = (1/α)·((α−1)/α)^{α−1}
//	                                          = exp(−log α − (α−1)·log(α/(α−1))):
//
// for x ≤ 0 the left side is 0; for x > 0 put u = e^{−x} ∈ (0, 1): the
// ratio of the two sides is (1−u)·u^{α−1}, whose derivative
// u^{α−2}((α−1)(1−u) − u) vanishes at u = (α−1)/α, where it equals c_α.
//
// Step 4 (δ). The hockey-stick divergence of the whole transcript is
// δ_total = E_P[(1 − e^{ε−L_T})_+] (all P_t ≪ Q_t, since a release with
// infinite RDP is never admitted). On A_j, R_T(α_j) ≤ B_j, so with
// x = L_T − ε,
//
//	(1 − e^{ε−L_T})_+ ≤ c_j e^{(α_j−1)(L_T−ε)}
//	                  = c_j Z_T(α_j) e^{(α_j−1)(R_T(α_j)−ε)}
//	                  ≤ c_j Z_T(α_j) e^{(α_j−1)(B_j−ε)},
//
// hence, as Z ≥ 0 and E[Z_T(α_j)] ≤ 1 (step 1),
// δ_total = Σ_j E[(1 − e^{ε−L_T})_+ 1_{A_j}]
// ≤ Σ_j c_j e^{(α_j−1)(B_j−ε)} E[Z_T(α_j) 1_{A_j}] ≤ Σ_j c_j e^{(α_j−1)(B_j−ε)}.
//
// Step 5 (the formula). Setting each term to δ/m:
// log c_j + (α_j−1)(B_j−ε) = log(δ/m) gives
// B_j = ε + (log(δ/m) + log α_j)/(α_j−1) + log(α_j/(α_j−1)), exactly the
// B_j of step 2; so δ_total ≤ m·δ/m = δ for every ordered pair of
// neighbours, which is (ε, δ)-DP. Against the non-adaptive
// conversion (Balle et al. 2020, Theorem 21, accounting.RDPToDP, the m = 1
// case) the union over the m fixed orders costs log(m)/(α−1) nats at the
// order that attains the minimum. This is why the orders are few (m = 20)
// and fixed: choosing them from the data, or adding orders later, would
// break step 4.
//
// # What a release's curve must be
//
// The curve Reserve charges must be an RDP bound that is fixed before the
// run touches the data (from its public parameters and earlier releases).
// The actual ledger passed to Commit may be smaller — an interrupted run
// that took fewer steps — when the decision to stop was made from public
// information or from the run's own earlier outputs (so every step's curve
// stays predictable), never from unreleased private values. A run that is
// killed (SIGKILL, a crash, a lost machine) never commits: its worst-case
// reservation stays charged forever. That is the safe outcome — the file
// may over-count, never under-count — and the curator can see such
// releases as "reserved" in Show.
//
// Each release's own ε in the file is the non-adaptive conversion of its
// curve alone at the file's δ (the m = 1 case), for information.
//
// # PLD
//
// Budget.Show also reports the PLD accountant's ε of all releases composed,
// when the PLD accountant supports every event. It is informational only:
// PLD composition assumes the mechanisms' parameters were fixed in advance,
// which runs chosen after seeing earlier results do not satisfy.
//
// # The file
//
// JSON, human-readable and versioned (Version):
//
//	{"version": 1, "dataset": "mnist", "epsilon": 1.5, "delta": 1e-05,
//	 "orders": [1.25, …, 256],
//	 "releases": [{"id": "…", "time": "RFC3339", "command": "train",
//	               "label": "…", "status": "reserved" | "done",
//	               "ledger": {…accounting.Ledger…}, "rdp": [… per order …],
//	               "epsilon": ε of this release alone}],
//	 "checksum": "…"}
//
// The checksum is the SHA-256 (hex) of the compact JSON encoding of the
// file without its checksum field. An infinite RDP value (a non-private
// run that was committed after it happened) is written as the string
// "+Inf". Load recomputes every release's curve from its ledger at the
// file's orders and refuses the file if they differ; it never resets or
// repairs anything.
//
// # Concurrency and crashes
//
// Reserve and Commit take an exclusive flock(2) on FILE.lock (created with
// mode 0600), read the file, and replace it atomically: a temporary file in
// the same directory, fsync, rename over FILE, fsync of the directory.
// Readers never see a partial file; concurrent runs are serialised, so none
// is lost; a crash before the rename leaves the previous file.
package budget
