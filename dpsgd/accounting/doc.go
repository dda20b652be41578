// Package accounting is dptune's privacy spine: events that say what a
// mechanism did to the private data, accountants that turn events into
// (ε, δ) guarantees, noise calibration, and the ledger every result carries.
//
// The split follows Google's dp_accounting (DpEvent vs PrivacyAccountant):
// an Event is an immutable description ("a Poisson-subsampled Gaussian with
// noise multiplier 1.1 and sampling rate 0.004, composed 2,350 times"); an
// Accountant knows how to bound the privacy loss of the events it supports
// and returns an error naming any event it does not — it never skips one.
//
// ε is in nats throughout. Neighbouring datasets differ by adding or removing
// one example (the relation under which Poisson subsampling is analysed).
//
// Accountants:
//
//   - RDP (Mironov 2017): Gaussian; the Poisson-subsampled Gaussian, exact at
//     integer and fractional orders (Mironov, Talwar, Zhang 2019, "Rényi
//     Differential Privacy of the Sampled Gaussian Mechanism", Section 3.3 and
//     3.4); composition by adding RDP per order; conversion to (ε, δ) by
//     Balle et al. 2020, "Hypothesis Testing Interpretations and Renyi
//     Differential Privacy", Theorem 21 (also Canonne, Kamath, Steinke 2020),
//     minimised over the orders.
package accounting
