// Package federated is DP-Hype's protocol ("DP-Hype: Distributed
// Differentially Private Hyperparameter Search"): private hyperparameter
// selection for data that never leaves its owners, and the federated
// training of the winner. Each client trains every candidate locally
// (non-privately, as in the paper: the vote is what is protected), votes for
// its ℓ best by its own held-out accuracy, scales the 0/1 vote vector by S
// and adds a share of discrete Gaussian noise; a secure summation (package
// secagg, Bonawitz et al. 2017 with double masking) reveals only the noisy
// sum; the server announces its argmax; the clients then train the winner
// together with FedAvg (McMahan et al. 2017).
//
// What is where: the vote mechanism, its noise and calibration (Mechanism,
// Calibrate, TopVotes, Winner; GoodSelectionBound, the paper's Theorem V.1);
// the candidates (a space.Space: CheckSpace, MNISTSpace) and the job every
// client is sent (Job); the protocol's server and client (Server, Client;
// the wire protocol is package votepb); the transport that carries them
// (Serve a Server on a listener, Dial a server for a Client, both over a
// Transport: mutual TLS with the curator's certificates, package pki, or
// plaintext on loopback); the rounds' deadlines; FedAvg of the winner (the
// server's rounds, and Job.FedAvg, all clients in one process for
// simulations) and client-level DP-FedAvg (UpdateSum).
// The package knows no tuner and imports none: it depends on dpsgd, model
// and data for the clients' local training, on privacy/accounting for the
// events its releases cost, and on the leaf tuning/space for the search
// space it shares with the tuners. The vote tuner of package tuning
// (tuning.Federated) plans its Job; package job runs it (job.Tune,
// job.RunVote, job.VoteClient) and owns the release.
//
// Privacy. Under replace-one-client adjacency a client's vote moves from ℓ
// candidates to at most ℓ others: L2 sensitivity √(2ℓ) and L1 sensitivity 2ℓ
// (S times that after scaling). A continuous Gaussian of variance σ² per
// coordinate would give (α, α·2ℓ/(2σ²)) = (α, α·ℓ/σ²)-RDP: some of the
// paper's formulas were lost in its text, so we derived this bound again,
// including that it does not grow with the number of candidates.
// What is released here is a sum of discrete Gaussians, which is not a
// discrete Gaussian, so the ledger's event is the distributed discrete
// Gaussian of Kairouz, Liu & Steinke 2021 (accounting.DistributedDiscreteGaussian),
// whose RDP adds Theorem 1's τ term; with the default S = 1024 every share
// has σ in the hundreds and τ underflows to 0, so the guarantee equals the
// continuous reading's. Noise shares are N_ℤ(0, S²σ²/((1−f)n − c)), so the
// sum of the ⌈(1−f)n⌉ or more clients it needs has at least the full
// variance even without the shares of c clients colluding with the server
// (the paper's dropout appendix; c = 0 by default); fewer and nothing is
// released.
//
// Dropouts. The number of survivors of each sum is released (in the
// ledger's labels and the report), and the accounting uses it; that is
// sound only if whether a client drops out does not depend on the data. So
// a client whose local work fails on its data — local SGD diverges, its
// share is too small to hold examples out, its training panics — does not
// leave: it abstains from the vote (the all-zero vote vector, within the
// same sensitivity as any ℓ-vote) or sends a zero FedAvg update, with its
// full noise share (Client.Run). Only process and network failures drop a
// client — or silence past a round's deadline (Server.TrainingTimeout for
// the rounds with local training, Server.MessageTimeout for the others) —
// and the guarantee at the realised survivor count assumes those are
// independent of the clients' data. A client bounds its own local training
// by Job.LocalTimeout, below the server's deadline, and abstains when it
// runs out, so that slow data (a larger share) does not show as a dropout
// either.
//
// Hostile updates. In a plain FedAvg round the server counts a client's
// non-finite parameters as a zero update and clips every update to
// MaxModelUpdate before averaging; a DP-FedAvg round whose decoded sum is
// larger than clipped updates and their noise allow (UpdateSum.CheckSum)
// aborts. No release holds a non-finite parameter.
//
// Only the winner is released, not the noisy counts: the argmax is all the
// paper's analysis needs, and the counts would tell every client how far
// its own vote was from the rest. (Releasing them would cost nothing more —
// they are the mechanism's output — but nothing uses them.)
//
// The final training is covered or labelled: with FinalDPSGD each client
// runs DP-SGD in each FedAvg round, and since an example lives in one
// client, the example-level cost is one client's DP-SGD over all rounds
// (Job.TrainingEvent), composed with the vote (a client-level guarantee
// implies the same example-level one). With FinalDPFedAvg the guarantee is
// client-level throughout: each FedAvg round, every client clips its model
// update, rounds it to integers and adds a discrete Gaussian share, and a
// fresh secure sum reveals only the noisy sum (UpdateSum; McMahan et al.
// 2018's DP-FedAvg with Kairouz, Liu & Steinke's distributed discrete
// Gaussian); it needs many clients, since the noise on the mean update
// shrinks only as 1/n. FinalNonPrivate is the paper's setting and its model
// is labelled not private.
//
// Adversaries. The secure sums are Bonawitz et al.'s actively secure
// variant (package secagg) when the clients hold certificates from the
// curator's CA (Client.Auth; package pki): a client signs its round-0 keys
// and the survivor set U3 it was sent, checks every other client's
// certificate and signatures itself, and reveals unmasking shares only
// after t valid signatures on its own U3. The threshold is
// t = Threshold(n, c) = max(⌊(n+c)/2⌋+1, 2), the least t with 2t > n + c for
// c = Job.Colluding clients that may collude with the server, and a job
// with ⌈(1−f)n⌉ < t is refused. Then:
//
//   - a semi-honest server (it follows the protocol) sees masked vectors
//     and the noisy sum of the survivors, never one client's vote or update;
//   - an active server (it may drop, alter, forge or split messages), alone
//     or with up to c colluding clients, learns no more than one noisy sum
//     over at least ⌈(1−f)n⌉ clients — every client refuses to sign a
//     smaller U3 (secagg.Params.MinSurvivors) — of which at least
//     ⌈(1−f)n⌉ − c are honest; never one client's vector. Fewer than
//     ⌈(1−f)n⌉ survivors abort the round and nothing is released.
//     Colluding clients know their own noise shares, so only the others'
//     count: every share is sized for ⌈(1−f)n⌉ − c honest survivors
//     (Mechanism.LocalStddev, UpdateSum.LocalStddev), and the ledger's
//     events count the survivors less c (Mechanism.Event), so the stated
//     ε holds against the server and its c colluders together.
//
// The server never vouches for a key: it only relays. The transport
// (Transport) is mutual TLS by default: the server takes a
// client's ID from its verified certificate, and refuses
// (codes.PermissionDenied) any message whose client ID differs from it or
// that does not carry the token of that client's Join, so a process that
// never joined, or joined as another client, cannot speak for one
// (Server.authorize). Without TLS (--insecure, loopback only) the Join token
// is the only binding and the clients have no certificates: the secure
// sums are then unauthenticated and withstand a semi-honest server only.
//
// The client does not trust the job. The server chooses every parameter a
// client is sent (the vote's σ and scale, f, c, t, the final training), so
// a client with Limits (Client.Limits; dptune vote client's --max-epsilon,
// --max-delta, --colluding, --allow-non-private) recomputes the job's
// guarantee itself — the vote at ⌈(1−f)n⌉ survivors composed with the
// final training, RDP accountant, at its own δ — and refuses a job above
// its ε, assuming fewer colluders than it does or a threshold below
// Threshold(n, c), or (unless allowed) with a non-private final training;
// it leaves before it loads its data or sends round 0 (ErrRefused).
//
// Hostile clients. In mutual-TLS mode the server admits a client's round-0
// keys only if their certificate is the one the client's connection
// verified (so it chains to the CA for client authentication and binds the
// client's ID), and only if the two keys differ from each other and from
// every key already in U1; a client whose keys are refused is dropped, and
// the honest clients go on without it. A refused message never leaves a
// round half-made. The vote's sum is refused (the round aborts) if a
// coordinate lies outside ±Mechanism.SumBound, which an honest sum exceeds
// with probability at most MaxWrapProbability; a plain FedAvg update is
// accepted for the open round only. Admissions close at Server.JoinTimeout:
// the run goes on if ⌈(1−f)n⌉ clients joined, else aborts.
//
// A timing side channel that is not closed. When a client's round-2
// message (its masked noisy vote, or a FedAvg round's update) reaches the
// server depends on how long its local training took, which depends on its
// data: a client whose local SGD diverges, or whose share is tiny, answers
// sooner. The server sees arrival times; they are outside the ledger, so
// the stated ε does not cover what a server learns from them. Holding every
// client's message until a public instant (the round's deadline) would
// close it, but would make every training round last its full deadline
// (an hour by default) however fast the clients are, so it is not done;
// Job.LocalTimeout caps the time a slow client can take, not the early
// answer of a fast one.
package federated
