package federated

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"

	"google.golang.org/grpc/metadata"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/federated/secagg"
	pb "github.com/dptune/dptune/federated/votepb"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// Client is one DP-Hype client: it holds its data, trains every candidate
// locally, votes, adds its noise share, takes part in the secure sum, and
// trains the winner in FedAvg rounds.
type Client struct {
	// Load returns the whole training set of the job's dataset; the client
	// keeps its own share of it (data.SplitClients with the job's public
	// split seed: a simulation of clients that each own their data).
	Load func(Job) (*data.Dataset, error)
	// Progress, if set, is told what the client is doing, including when
	// it abstains or sends a zero update after a local failure (which only
	// the client's own log shows).
	Progress func(stage string, done, total int)
	// Seed, if set, makes the client's noise and DP-SGD reproducible (tests
	// and simulations); nil draws them from crypto/rand.
	Seed *uint64
	// Part, if positive, is the share of the split this client holds
	// (1 … Parts): it joins as client Part−1, and the server refuses a
	// second client with the same part. Parts, if positive, is the number
	// of shares it expects: a job for another number of clients is refused.
	Part, Parts int
	// Auth, if set, is the client's certificate (binding its client ID),
	// key and the curator's CA: the secure sums are then the actively
	// secure variant (secagg.NewClient), in which the client signs its keys
	// and U3 and checks every other client's certificate and signatures.
	// Without it a malicious server can forge other clients' keys, and
	// only a semi-honest server is withstood.
	Auth *secagg.Auth
	// Limits, if set, are the client's demands on the server's job
	// (Limits.Check): a job that misses them is refused with an error
	// wrapping ErrRefused before the client loads its data or sends
	// anything but its Join. Nil accepts any job that passes Job.Check,
	// which lets the server choose the privacy: for simulations only.
	Limits *Limits

	session []byte // the session id the server sent at Join
}

// ClientReport is what a client knows at the end: its ID, the winner, and
// nothing of the others.
type ClientReport struct {
	ID       int
	Winner   int
	Examples int
}

func (c *Client) progress(stage string, done, total int) {
	if c.Progress != nil {
		c.Progress(stage, done, total)
	}
}

// Run joins the server behind conn and takes part until the last FedAvg
// round. Cancelling ctx leaves the session; the server then counts the
// client as dropped. A failure of the local work on the client's data
// (divergence, a share too small to hold examples out of, a panic) does
// not: the client sends an abstention or a zero update with its full noise
// share instead (localVote, localRound), so whether it drops never depends
// on its data. Errors: loading the data, the network, ctx.
func (c *Client) Run(ctx context.Context, conn pb.VoteClient) (ClientReport, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c.Part < 0 || c.Parts < 0 || c.Part > c.Parts && c.Parts > 0 {
		return ClientReport{}, fmt.Errorf("vote: part %d of %d", c.Part, c.Parts)
	}
	stream, err := conn.Join(ctx, &pb.JoinRequest{Part: int32(c.Part)})
	if err != nil {
		return ClientReport{}, fmt.Errorf("vote: joining: %w", err)
	}
	sess, err := stream.Recv()
	if err != nil {
		return ClientReport{}, fmt.Errorf("vote: joining: %w", err)
	}
	var job Job
	if err := json.Unmarshal(sess.Job, &job); err != nil {
		return ClientReport{}, fmt.Errorf("vote: the server's job: %w", err)
	}
	if err := job.Check(); err != nil {
		return ClientReport{}, fmt.Errorf("vote: the server's job: %w", err)
	}
	if c.Limits != nil {
		if err := c.Limits.Check(job); err != nil {
			return ClientReport{}, err
		}
	}
	if c.Parts > 0 && job.Clients != c.Parts {
		return ClientReport{}, fmt.Errorf("vote: this client holds part %d of %d, the server's job has %d clients", c.Part, c.Parts, job.Clients)
	}
	// Every later call carries the Join's token: the server refuses a
	// message naming this client without it.
	ctx = metadata.AppendToOutgoingContext(ctx, TokenKey, hex.EncodeToString(sess.Token))
	c.session = sess.SessionId
	id := int(sess.ClientId)
	if c.Part > 0 && id != c.Part-1 {
		return ClientReport{}, fmt.Errorf("vote: asked to join as part %d, the server gave client ID %d", c.Part, id)
	}
	rep := ClientReport{ID: id}

	// The client's data: its share of the split, then its own held-out part.
	// A share too small to split, or to hold examples out of, is a local
	// failure, not a reason to leave (see localVote and localRound).
	all, err := c.Load(job)
	if err != nil {
		return rep, err
	}
	var mine, train, held *data.Dataset
	if err := safely(func() (err error) {
		shares, err := job.Shares(all)
		if err != nil {
			return err
		}
		mine = shares[id]
		train, held, err = job.HoldOut(mine, c.rng("held-out"))
		return err
	}); err != nil {
		train, held = nil, nil // the client abstains
	}
	if mine != nil {
		rep.Examples = mine.N
	}

	// The vote: rounds 0 and 1 of the secure sum before the long local
	// training, so a dead client is known early; then the local scores, the
	// vote (an abstention if the client cannot score) and its noise share.
	total := job.Space.Size()
	out, err := c.secureSum(ctx, conn, job, id, 0, total, func() ([]uint64, error) {
		votes, failed, err := job.localVote(ctx, train, held, func(done int) { c.progress("candidates", done, total) })
		if err != nil {
			return nil, err
		}
		if failed {
			c.progress("abstaining from the vote (local scoring failed)", 0, total)
		}
		return job.Mechanism.NoisyShare(votes, c.rng("vote noise"))
	})
	if err != nil {
		return rep, err
	}
	rep.Winner = int(out.Winner)
	if rep.Winner < 0 || rep.Winner >= total {
		return rep, fmt.Errorf("vote: the server announced candidate %d of %d", rep.Winner, total)
	}

	// FedAvg of the winner, from the public initial parameters.
	net, err := model.New(job.Arch, randsrc.New(&job.InitSeed, "init"))
	if err != nil {
		return rep, err
	}
	cand := job.Space.At(rep.Winner).Values
	upd := job.Updates(net.NumParams())
	for r := 0; r < job.Final.Rounds; r++ {
		global := slices.Clone(net.Params)
		failed, err := job.localRound(ctx, net, mine, cand, r, c.Seed)
		if err != nil {
			return rep, fmt.Errorf("vote: FedAvg round %d: %w", r+1, err)
		}
		if failed {
			c.progress("sending a zero update (local training failed)", r+1, job.Final.Rounds)
		}
		var values []float32
		if job.Final.Mode == FinalDPFedAvg {
			out, err := c.secureSum(ctx, conn, job, id, r+1, upd.Dimension, func() ([]uint64, error) {
				return upd.Encode(delta(net.Params, global), c.rng(fmt.Sprintf("update %d", r+1)))
			})
			if err != nil {
				return rep, err
			}
			values = out.Values
		} else {
			g, err := conn.Update(ctx, &pb.Params{ClientId: int32(id), Round: int32(r), Values: net.Params})
			if err != nil {
				return rep, err
			}
			values = g.Values
		}
		if len(values) != len(net.Params) {
			return rep, fmt.Errorf("vote: the server sent %d parameters, want %d", len(values), len(net.Params))
		}
		copy(net.Params, values)
		c.progress("rounds", r+1, job.Final.Rounds)
	}
	return rep, nil
}

// delta is the local update a − b.
func delta(a, b []float32) []float32 {
	d := make([]float32, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

// secureSum takes part in secure sum k (0: the vote; r ≥ 1: FedAvg round
// r's updates) of vectors of the given length: rounds 0 and 1, then input
// (which may take long), then rounds 2, 3 (the consistency check) and 4.
// Every sum has fresh keys and self-masks (Bonawitz et al. 2017's protocol
// is one-shot).
func (c *Client) secureSum(ctx context.Context, conn pb.VoteClient, job Job, id, k, length int, input func() ([]uint64, error)) (*pb.Outcome, error) {
	agg, err := secagg.NewClient(secagg.Params{Clients: job.Clients, Threshold: job.Threshold, Length: length,
		MinSurvivors: job.Mechanism.MinSurvivors(), Session: sumSession(c.session, k)}, id, rand.Reader, c.Auth)
	if err != nil {
		return nil, err
	}
	keys, err := agg.AdvertiseKeys()
	if err != nil {
		return nil, err
	}
	list, err := conn.AdvertiseKeys(ctx, &pb.Keys{ClientId: int32(id), EncryptKey: keys.EncryptKey, MaskKey: keys.MaskKey, Sum: int32(k),
		Certificate: keys.Cert, Signature: keys.Sig})
	if err != nil {
		return nil, err
	}
	var u1 []secagg.Keys
	for _, k := range list.Keys {
		u1 = append(u1, secagg.Keys{ID: int(k.ClientId), EncryptKey: k.EncryptKey, MaskKey: k.MaskKey, Cert: k.Certificate, Sig: k.Signature})
	}
	shr, err := agg.ShareKeys(u1)
	if err != nil {
		return nil, err
	}
	inbox, err := conn.ShareKeys(ctx, &pb.Shares{ClientId: int32(id), Ciphertext: toPB(shr.Ciphertext), Commitment: shr.Commitment, Sum: int32(k)})
	if err != nil {
		return nil, err
	}
	x, err := input()
	if err != nil {
		return nil, err
	}
	masked, err := agg.MaskInput(x, fromPB(inbox.Ciphertext))
	if err != nil {
		return nil, err
	}
	surv, err := conn.MaskedInput(ctx, &pb.Masked{ClientId: int32(id), Y: masked.Y, Sum: int32(k)})
	if err != nil {
		return nil, err
	}
	var u3 []int
	for _, v := range surv.ClientIds {
		u3 = append(u3, int(v))
	}
	sig, err := agg.ConsistencyCheck(u3)
	if err != nil {
		return nil, err
	}
	u4, err := conn.ConsistencyCheck(ctx, &pb.U3Signature{ClientId: int32(id), Signature: sig.Sig, Sum: int32(k)})
	if err != nil {
		return nil, err
	}
	var sigs []secagg.Signature
	for _, s := range u4.Signatures {
		sigs = append(sigs, secagg.Signature{From: int(s.ClientId), Sig: s.Signature})
	}
	um, err := agg.Unmask(sigs)
	if err != nil {
		return nil, err
	}
	return conn.Unmask(ctx, &pb.UnmaskShares{ClientId: int32(id), SelfMask: toPB(um.SelfMask), MaskKeys: toPB(um.MaskKeys), Sum: int32(k)})
}

// rng is a random source for purpose: from Seed if set, else crypto/rand.
func (c *Client) rng(purpose string) *mrand.Rand { return randsrc.New(c.Seed, purpose) }

// finalConfig is round r's local training of the winner c: DP-SGD with the
// job's noise multiplier, sampling rate and clipping norm, dividing the noisy
// sum by q times the client's nominal size (never its count), or plain SGD
// otherwise (with FinalDPFedAvg the noise is added to the update's sum). The learning-rate decay continues across rounds.
func (j Job) finalConfig(c map[string]float64, r int, seed *uint64) dpsgd.Config {
	f := j.Final
	cfg := dpsgd.Config{SamplingRate: f.SamplingRate, ExpectedBatchSize: f.SamplingRate * j.ClientNominalN(),
		Steps: f.StepsPerRound, LearningRate: c[LearningRate], Momentum: c[Momentum]}
	if d := c[LRDecay]; d > 0 {
		cfg.LRDecay = d
		cfg.LearningRate *= math.Pow(d, f.SamplingRate*float64(r*f.StepsPerRound))
	}
	if f.Mode != FinalDPSGD {
		cfg.NonPrivate = true
	} else {
		cfg.NoiseMultiplier, cfg.ClipNorm = f.NoiseMultiplier, f.ClipNorm
	}
	if seed != nil {
		s := *seed ^ uint64(r+1)<<32
		cfg.Seed = &s
	}
	return cfg
}
