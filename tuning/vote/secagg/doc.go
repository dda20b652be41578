// Package secagg is secure summation of integer vectors modulo 2^64 with
// double masking: the protocol of Bonawitz et al. 2017, "Practical Secure
// Aggregation for Privacy-Preserving Machine Learning" (§4, Figure 4, the
// semi-honest server variant), which DP-Hype (tuning/vote) uses to release
// only the sum of the clients' noisy vote vectors.
//
// Rounds, with n clients, threshold t and vectors of length d:
//
//  0. AdvertiseKeys: each client u makes two X25519 key pairs (crypto/ecdh),
//     c_u for encrypting its shares and s_u for its pairwise masks, and sends
//     both public keys. The server needs at least t clients (U1).
//  1. ShareKeys: u draws a 32-byte self-mask seed b_u and Shamir-shares both
//     b_u and s_u's private key t-out-of-|U1| (HashiCorp Vault's shamir
//     package). The shares for v travel through the server encrypted with
//     AES-256-GCM under a key derived (HKDF-SHA256) from the X25519 agreement
//     of c_u and c_v, bound to the pair (u, v). u also commits to b_u by its
//     SHA-256. The server needs t clients (U2).
//  2. MaskedInputCollection: u sends y_u = x_u + PRG(b_u) + Σ_{v∈U2} ±PRG(s_uv)
//     mod 2^64, + for u < v and − for u > v, where s_uv is the X25519
//     agreement of s_u and s_v and PRG is AES-256-CTR. The pairwise masks
//     cancel in the sum over clients that all sent; the self-mask hides y_u
//     even from a server that later learns s_u. The server needs t (U3).
//  3. Unmasking: the server announces U3. Each client answers once: for
//     every v ∈ U2 it reveals its share of b_v if v ∈ U3 and of s_v's private
//     key if v ∉ U3 — never both for one v, and never a second time. The
//     server reconstructs b_v for v ∈ U3 (checked against the commitment)
//     and s_v for v ∈ U2∖U3 (checked against the advertised public key),
//     removes the masks and outputs Σ_{u∈U3} x_u.
//
// The server learns the masked vectors (each uniform on (ℤ_{2^64})^d given
// the others, by the self-mask) and their sum. A client that drops after
// round 2 is still counted (its self-mask is reconstructed); one that drops
// before is left out, and its late vector is refused: for it the server only
// ever holds shares of s_v, never of b_v, so its vector cannot be unmasked.
//
// What is not here: Bonawitz et al.'s round 3 (ConsistencyCheck) and the
// signatures of the actively secure variant. The server is trusted to relay
// messages and keys faithfully (semi-honest); a relayed share that was
// altered fails authentication at the client, which aborts, and an altered
// share of a secret fails the commitment or key check at the server, which
// aborts. Nothing is released from an aborted round.
//
// Client and Server are transport-free state machines; tuning/vote carries
// their messages over gRPC.
package secagg
