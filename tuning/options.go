package tuning

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A tuner's own settings are one struct (GPOptions, DoublingOptions,
// VoteOptions), each exported field an option declared by its tags:
//
//	Clients int `option:"clients" default:"10" help:"number of client processes"`
//
// option is its name (also the command-line flag, without "--"), default
// its default as the command line writes it (parsed as the field's type:
// int, float64, bool, string or time.Duration), help one line of help
// without the tuner's name, and curator, for a string option naming a
// file, the file's name in the curator's directory when it is left empty
// (Option.CuratorFile). The struct is the only declaration: its Tuner's
// Options describes it, the command line makes its flags from that, and
// the tuner decodes Spec.Options into it.

// Option is one of a tuner's own settings, as its options struct declares
// it (OptionsOf). Default's type (int, float64, bool, string or
// time.Duration) is the value's type in Values.
type Option struct {
	Name    string // also the command-line flag, without "--"
	Default any
	Help    string // one line, without the tuner's name
	// CuratorFile, for a string option naming a file, is the file's name
	// in the curator's directory beside the release when the option is
	// left empty.
	CuratorFile string
}

// Values are a tuner's settings by option name: how a command line or a
// benchmark's flags hold them. A missing one takes its default; a name the
// tuner does not declare, or a value of another type than its default's,
// is refused (CheckOptions). A Go caller builds them from the tuner's
// options struct (OptionValues, GPOptions.Values, …), whose field names the
// compiler checks.
type Values map[string]any

// optionField is one option of an options struct: its Option and the
// index of its field.
type optionField struct {
	Option
	index int
}

var durationType = reflect.TypeFor[time.Duration]()

// optionFields returns the options of struct type t in field order. It
// panics on a tagged field of a type options cannot take or a default that
// does not parse, and on a repeated name: programming errors, caught when
// the tuner registers.
func optionFields(t reflect.Type) []optionField {
	var out []optionField
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := f.Tag.Lookup("option")
		if !ok {
			continue
		}
		if name == "" || !f.IsExported() {
			panic(fmt.Sprintf("tuning: %s.%s: an option needs a name and an exported field", t, f.Name))
		}
		for _, o := range out {
			if o.Name == name {
				panic(fmt.Sprintf("tuning: %s: option %s declared twice", t, name))
			}
		}
		def, err := parseDefault(f.Type, f.Tag.Get("default"))
		if err != nil {
			panic(fmt.Sprintf("tuning: %s.%s: %v", t, f.Name, err))
		}
		out = append(out, optionField{Option: Option{Name: name, Default: def, Help: f.Tag.Get("help"), CuratorFile: f.Tag.Get("curator")}, index: i})
	}
	return out
}

// parseDefault is tag, an option's default as the command line writes it,
// as a value of type t ("" is the zero value).
func parseDefault(t reflect.Type, tag string) (any, error) {
	if t == durationType {
		if tag == "" {
			return time.Duration(0), nil
		}
		return time.ParseDuration(tag)
	}
	if tag == "" {
		switch t.Kind() {
		case reflect.Int, reflect.Float64, reflect.Bool, reflect.String:
			return reflect.Zero(t).Interface(), nil
		}
	}
	switch t.Kind() {
	case reflect.Int:
		v, err := strconv.Atoi(tag)
		return v, err
	case reflect.Float64:
		v, err := strconv.ParseFloat(tag, 64)
		return v, err
	case reflect.Bool:
		v, err := strconv.ParseBool(tag)
		return v, err
	case reflect.String:
		return tag, nil
	}
	return nil, fmt.Errorf("an option of type %s (want int, float64, bool, string or time.Duration)", t)
}

// structOf is the struct type of opts, a struct or a pointer to one.
func structOf(opts any) reflect.Type {
	t := reflect.TypeOf(opts)
	if t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tuning: options of type %T are not a struct", opts))
	}
	return t
}

// OptionsOf describes the options struct opts (a struct or a pointer to
// one; its values are ignored): one Option per tagged field, in field
// order, each with its tag's default. A Tuner's Options is OptionsOf its
// options struct.
func OptionsOf(opts any) []Option {
	fs := optionFields(structOf(opts))
	out := make([]Option, len(fs))
	for i, f := range fs {
		out[i] = f.Option
	}
	return out
}

// DefaultOptions returns the options struct T with every option at its
// tag's default.
func DefaultOptions[T any]() T {
	var o T
	v := reflect.ValueOf(&o).Elem()
	for _, f := range optionFields(v.Type()) {
		v.Field(f.index).Set(reflect.ValueOf(f.Default).Convert(v.Field(f.index).Type()))
	}
	return o
}

// OptionValues returns the options struct opts (a struct or a pointer to
// one) as Values: every option, by name.
func OptionValues(opts any) Values {
	v := reflect.Indirect(reflect.ValueOf(opts))
	out := Values{}
	for _, f := range optionFields(structOf(opts)) {
		fv := v.Field(f.index)
		out[f.Name] = fv.Convert(reflect.TypeOf(f.Default)).Interface()
	}
	return out
}

// DecodeOptions returns the options struct T of the tuner called tuner
// with vals (its Spec.Options) set over their defaults, and an error
// wrapping ErrInvalid for the first name (in sorted order) that T does not
// declare or whose value is not of its default's type; such a value is
// left at its default. It is how a tuner reads its options.
func DecodeOptions[T any](tuner string, vals Values) (T, error) {
	o := DefaultOptions[T]()
	v := reflect.ValueOf(&o).Elem()
	fs := optionFields(v.Type())
	opts := make([]Option, len(fs))
	for i, f := range fs {
		opts[i] = f.Option
	}
	var first error
	for _, name := range slices.Sorted(maps.Keys(vals)) {
		i, err := checkOption(tuner, opts, name, vals[name])
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		fv := v.Field(fs[i].index)
		fv.Set(reflect.ValueOf(vals[name]).Convert(fv.Type()))
	}
	return o, first
}

// checkOption returns the index in opts, tuner's options, of option name,
// or an error wrapping ErrInvalid if tuner has no such option or value is
// not of its default's type.
func checkOption(tuner string, opts []Option, name string, value any) (int, error) {
	i := slices.IndexFunc(opts, func(o Option) bool { return o.Name == name })
	switch {
	case i < 0 && len(opts) == 0:
		return i, invalidf("the %s tuner takes no options, not %q", tuner, name)
	case i < 0:
		names := make([]string, len(opts))
		for j, o := range opts {
			names[j] = o.Name
		}
		return i, invalidf("the %s tuner has no option %q (its options: %s)", tuner, name, strings.Join(names, ", "))
	case reflect.TypeOf(value) != reflect.TypeOf(opts[i].Default):
		return i, invalidf("option %s of the %s tuner is a %T, want a %T", name, tuner, value, opts[i].Default)
	}
	return i, nil
}

// CheckOptions refuses a value in spec.Options that tu does not declare
// (tu.Options), naming the tuner's options, or whose type is not its
// option's default's. The error wraps ErrInvalid.
func CheckOptions(tu Tuner, spec Spec) error {
	opts := tu.Options()
	for _, name := range slices.Sorted(maps.Keys(spec.Options)) {
		if _, err := checkOption(tu.Name(), opts, name, spec.Options[name]); err != nil {
			return err
		}
	}
	return nil
}
