// Package votepb is DP-Hype's wire protocol (package federated): the
// protobuf messages and the gRPC service dptune.vote.v1.Vote of vote.proto
// — Join, then each secure-summation round (AdvertiseKeys, ShareKeys,
// MaskedInput, ConsistencyCheck, Unmask) and the FedAvg Update — with the
// job sent as JSON in Session.job. vote.pb.go and vote_grpc.pb.go are
// generated from vote.proto by `make proto` and checked in, so building
// never needs protoc; the proto package and service names are the wire
// format and do not change when the Go package moves.
package votepb
