package temporalrunner

import (
	"context"
	"fmt"
	"reflect"

	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/proto"

	"github.com/dptune/dptune/runner"
)

// roles names the payloads this package exchanges by the Go type they
// carry; the role is bound into each payload's associated data, so that a
// task's output never opens as a submit signal, a results answer never as a
// key answer, and so on. Other types are bound as "go type T".
var roles = map[reflect.Type]string{
	reflect.TypeFor[Start]():         "start",
	reflect.TypeFor[[]runner.Task](): "submit",
	reflect.TypeFor[closeRequest]():  "close",
	// Roles are bound into every sealed payload: a task's input and
	// output keep their first names so that sealed histories still open.
	reflect.TypeFor[runner.Task]():   "job input",
	reflect.TypeFor[[]byte]():        "job output",
	reflect.TypeFor[int]():           "results query",
	reflect.TypeFor[[]Result]():      "results answer",
	reflect.TypeFor[resultsAnswer](): "results answer from",
	reflect.TypeFor[KeyBlob]():       "key answer",
	reflect.TypeFor[int64]():         "progress",
	reflect.TypeFor[failureText]():   "failure",
}

// failureText is the sealed part of a failure: the SDK's encoded common
// attributes (converter.EncodeCommonFailureAttributes), same JSON.
type failureText struct {
	Message    string `json:"message"`
	StackTrace string `json:"stack_trace"`
}

func roleOf(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	if r, ok := roles[t]; ok {
		return r
	}
	// The SDK seals a failure's message and stack as its unexported
	// converter.encodedFailure, the JSON of failureText.
	if t.PkgPath() == "go.temporal.io/sdk/converter" && t.Name() == "encodedFailure" {
		return "failure"
	}
	return "go type " + t.String()
}

// sealedConverter is the data converter of one context: it converts values
// with the SDK's default converter and seals every payload with its codec,
// bound to the context's workflow, run and the value's role. The SDK asks
// for the converter of each context (converter.ContextAware): a workflow's
// (its ID and run ID), an activity's (its workflow's), a curator's call
// (WithExecution), or none (the failure converter's: bound to no workflow).
type sealedConverter struct {
	c       *Codec
	wf, run string
	inner   converter.DataConverter
}

// NewDataConverter returns the data converter sealing every payload with c
// (to give client.Options.DataConverter): the converter of each context
// binds that context's workflow and run.
func NewDataConverter(c *Codec) converter.DataConverter {
	return sealedConverter{c: c, inner: converter.GetDefaultDataConverter()}
}

func (s sealedConverter) binding(role string) Binding {
	b := Binding{WorkflowID: s.wf, RunID: s.run, Role: role}
	if role == "start" {
		b.RunID = "" // sealed before the server names the run
	}
	return b
}

// ToPayload implements converter.DataConverter. A converter.RawValue
// holding a payload already sealed (Runner's queries) goes as it is.
func (s sealedConverter) ToPayload(v any) (*commonpb.Payload, error) {
	if rv, ok := v.(converter.RawValue); ok && isSealed(rv.Payload()) {
		return rv.Payload(), nil
	}
	p, err := s.inner.ToPayload(v)
	if err != nil {
		return nil, err
	}
	return s.c.Seal(p, s.binding(roleOf(reflect.TypeOf(v))))
}

// FromPayload implements converter.DataConverter. Into a
// *converter.RawValue it gives the payload still sealed, for the caller to
// open (Runner's queries, which the SDK's client converts without a
// context): nothing unsealed ever comes out of it.
func (s sealedConverter) FromPayload(p *commonpb.Payload, ptr any) error {
	if rv, ok := ptr.(*converter.RawValue); ok {
		*rv = converter.NewRawValue(p)
		return nil
	}
	t := reflect.TypeOf(ptr)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("temporalrunner: decoding a payload into %T, not a pointer", ptr)
	}
	q, err := s.c.Open(p, s.binding(roleOf(t.Elem())))
	if err != nil {
		return err
	}
	return s.inner.FromPayload(q, ptr)
}

// ToPayloads implements converter.DataConverter.
func (s sealedConverter) ToPayloads(vs ...any) (*commonpb.Payloads, error) {
	out := &commonpb.Payloads{}
	for _, v := range vs {
		p, err := s.ToPayload(v)
		if err != nil {
			return nil, err
		}
		out.Payloads = append(out.Payloads, p)
	}
	return out, nil
}

// FromPayloads implements converter.DataConverter.
func (s sealedConverter) FromPayloads(ps *commonpb.Payloads, ptrs ...any) error {
	for i, p := range ps.GetPayloads() {
		if i >= len(ptrs) {
			break
		}
		if err := s.FromPayload(p, ptrs[i]); err != nil {
			return err
		}
	}
	return nil
}

// ToString implements converter.DataConverter: it never decrypts.
func (s sealedConverter) ToString(p *commonpb.Payload) string {
	return fmt.Sprintf("[sealed payload, %d bytes]", len(p.GetData()))
}

// ToStrings implements converter.DataConverter.
func (s sealedConverter) ToStrings(ps *commonpb.Payloads) []string {
	out := make([]string, len(ps.GetPayloads()))
	for i, p := range ps.GetPayloads() {
		out[i] = s.ToString(p)
	}
	return out
}

// WithWorkflowContext implements workflow.ContextAware: the workflow's
// own execution.
func (s sealedConverter) WithWorkflowContext(ctx workflow.Context) converter.DataConverter {
	e := workflow.GetInfo(ctx).WorkflowExecution
	s.wf, s.run = e.ID, e.RunID
	return s
}

// WithContext implements workflow.ContextAware: an activity's workflow,
// or the execution a curator's call names (WithExecution).
func (s sealedConverter) WithContext(ctx context.Context) converter.DataConverter {
	if activity.IsActivity(ctx) {
		e := activity.GetInfo(ctx).WorkflowExecution
		s.wf, s.run = e.ID, e.RunID
		return s
	}
	s.wf, s.run = "", ""
	if e, ok := ctx.Value(executionKey{}).(execution); ok {
		s.wf, s.run = e.id, e.run
	}
	return s
}

type executionKey struct{}

type execution struct{ id, run string }

// WithExecution returns ctx for a client call to workflow id's run (""
// before the server has named it): the payloads the call sends and
// receives are bound to them.
func WithExecution(ctx context.Context, id, run string) context.Context {
	return context.WithValue(ctx, executionKey{}, execution{id, run})
}

// isSealed reports whether p claims to be sealed (Open checks it).
func isSealed(p *commonpb.Payload) bool {
	return string(p.GetMetadata()["encoding"]) == encodingEncrypted
}

// withheld replaces the text of a failure that is not sealed.
const withheld = "a failure that is not sealed with the curator's key (its text is withheld)"

// FailureConverter turns errors into failures whose message and stack
// trace are sealed (role "failure"; a failure converter sees no context,
// so failures are bound to the key and their role, not to a workflow) and
// back. A failure whose text is not sealed — the server's own, or a forged
// one — becomes an error that says so: its text is never passed on.
type FailureConverter struct {
	dc    converter.DataConverter
	inner converter.FailureConverter
}

// NewFailureConverter returns the failure converter of c.
func NewFailureConverter(c *Codec) *FailureConverter {
	dc := NewDataConverter(c)
	return &FailureConverter{dc: dc, inner: temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc, EncodeCommonAttributes: true})}
}

// ErrorToFailure implements converter.FailureConverter.
func (f *FailureConverter) ErrorToFailure(err error) *failurepb.Failure {
	return f.inner.ErrorToFailure(err)
}

// FailureToError implements converter.FailureConverter.
func (f *FailureConverter) FailureToError(fl *failurepb.Failure) error {
	if fl == nil {
		return nil
	}
	fl = proto.Clone(fl).(*failurepb.Failure)
	for g := fl; g != nil; g = g.GetCause() {
		var t failureText
		if err := f.dc.FromPayload(g.GetEncodedAttributes(), &t); err != nil {
			t = failureText{Message: withheld}
		}
		g.Message, g.StackTrace, g.EncodedAttributes = t.Message, t.StackTrace, nil
	}
	return f.inner.FailureToError(fl)
}

// closeRequest is the close signal's payload: sealed, so that only the
// curator ends an invocation.
type closeRequest struct {
	Close bool `json:"close"`
}
