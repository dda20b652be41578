// Package secagg is secure summation of integer vectors modulo 2^64 with
// double masking: the protocol of Bonawitz et al. 2017, "Practical Secure
// Aggregation for Privacy-Preserving Machine Learning" (§4, Figure 4),
// with the actively secure variant's signatures and ConsistencyCheck
// round, which DP-Hype (package federated) uses to release only the sum of
// the clients' noisy vote vectors (and of their clipped FedAvg updates).
//
// Rounds, with n clients, threshold t and vectors of length d:
//
//  0. AdvertiseKeys: each client u makes two X25519 key pairs (crypto/ecdh),
//     c_u for encrypting its shares and s_u for its pairwise masks, and sends
//     both public keys — with Auth, together with its certificate (issued by
//     the curator's CA, binding u's ID; package federated/pki) and its
//     signature on (session, u, c_u^PK, s_u^PK). The server needs at least t
//     clients (U1).
//  1. ShareKeys: u checks U1 — with Auth, every certificate chains to the CA
//     and binds the ID it comes with, and every signature is valid; its own
//     keys are the ones it sent; no key appears twice — and aborts on any
//     failure. It then draws a 32-byte self-mask seed b_u and Shamir-shares
//     both b_u and s_u's private key t-out-of-|U1| (HashiCorp Vault's shamir
//     package). The shares for v travel through the server encrypted with
//     AES-256-GCM under a key derived (HKDF-SHA256) from the X25519 agreement
//     of c_u and c_v, bound to the pair (u, v). u also commits to b_u by its
//     SHA-256. The server needs t clients (U2).
//  2. MaskedInputCollection: u sends y_u = x_u + PRG(b_u) + Σ_{v∈U2} ±PRG(s_uv)
//     mod 2^64, + for u < v and − for u > v, where s_uv is the X25519
//     agreement of s_u and s_v and PRG is AES-256-CTR. The pairwise masks
//     cancel in the sum over clients that all sent; the self-mask hides y_u
//     even from a server that later learns s_u. The server needs t (U3).
//  3. ConsistencyCheck: the server announces U3; u checks U3 ⊆ U2, |U3| ≥ t
//     and u ∈ U3, and signs (session, U3) with Auth — once. The server
//     forwards the signatures it got (U4, at least t).
//  4. Unmasking: u checks that at least t distinct clients of U3 signed the
//     very U3 it signed, each signature valid under the certificate the
//     signer showed in round 0, and only then, once, reveals for every
//     v ∈ U2 its share of b_v if v ∈ U3 and of s_v's private key if
//     v ∉ U3 — never both for one v. The server reconstructs b_v for
//     v ∈ U3 (checked against the commitment) and s_v for v ∈ U2∖U3
//     (checked against the advertised public key), removes the masks and
//     outputs Σ_{u∈U3} x_u.
//
// Every signature covers Params.Session, which names the session and the
// sum, so a signature is worth nothing in another session or sum.
//
// What the server learns. A semi-honest server (it follows the protocol)
// learns the masked vectors — each uniform on (ℤ_{2^64})^d given the
// others, by the self-mask — and their sum, even colluding with up to t − 1
// clients. An active server (it may drop, delay, alter, forge or send
// different messages to different clients) colluding with up to c clients,
// where 2t > n + c, learns no more than the sum of the inputs of a set of
// at least t − c honest clients: to unmask one honest client v it would
// need t shares of b_v (from clients told v ∈ U3) and t of s_v (from
// clients told v ∉ U3); each group must hold t signers of its U3, at
// least t − c of them honest, and an honest client signs one U3, so
// 2(t − c) ≤ n − c would be needed. It cannot forge an honest client's keys
// or signatures (they are certified by the CA, which the server must not
// hold). A client that drops after round 2 is still counted (its self-mask
// is reconstructed); one that drops before is left out, and its late
// vector is refused: for it the server only ever holds shares of s_v,
// never of b_v, so its vector cannot be unmasked. The dropouts the sum
// tolerates are n − t.
//
// Without Auth (NewClient's auth nil) nothing is signed or checked, the
// consistency check only counts, and a server that forges the round-0 keys
// of other clients reads every share: that variant withstands a
// semi-honest server only.
//
// A relayed share that was altered fails authentication at its recipient,
// which aborts, and an altered share of a secret fails the commitment or
// key check at the server, which aborts. Nothing is released from an
// aborted round. What the sum of the survivors' inputs reveals is the
// business of the noise the inputs carry (package federated).
//
// Client and Server are transport-free state machines; package federated
// carries their messages over gRPC.
package secagg
