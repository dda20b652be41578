package data_test

import (
	"fmt"
	"slices"
	"sync"

	"github.com/dptune/dptune/data"
)

// stripes is a dataset added from a test file: n 4×4 grey images, each
// horizontal (label 0) or vertical (label 1) stripes, alternately. A
// dataset's own file holds its loader, reading the files in dir, and
// registers it in init with its public facts.
func stripes(name string, n int) *data.Dataset {
	d := &data.Dataset{Name: name, X: make([]float32, n*16), Y: make([]uint8, n), N: n, C: 1, H: 4, W: 4, Classes: 2}
	for i := range n {
		d.Y[i] = uint8(i % 2)
		for y := range 4 {
			for x := range 4 {
				if (d.Y[i] == 0 && y%2 == 0) || (d.Y[i] == 1 && x%2 == 0) {
					d.X[i*16+y*4+x] = 1
				}
			}
		}
	}
	return d
}

var registerStripes sync.Once

// A dataset added from a test file: once registered, it is listed and
// looked up by its name (the --dataset flag), with the public facts a job
// plans with before reading it — the nominal sizes, the shape, the
// normalisation constants — and its loader. (A dataset's own file
// registers it in init; this example registers it when it runs, after the
// tests that list the built-in datasets.)
func ExampleRegister() {
	registerStripes.Do(func() {
		data.Register(data.Named{Name: "stripes", NominalN: 100, TestN: 20, C: 1, H: 4, W: 4, Classes: 2,
			ClassNames: []string{"horizontal", "vertical"}, Mean: []float64{0.5}, Std: []float64{0.5},
			Load: func(dir string) (train, test *data.Dataset, err error) {
				return stripes("stripes/train", 100), stripes("stripes/test", 20), nil
			},
			DirHelp: "any directory (the images are drawn, not read)", Rank: 10})
	})

	fmt.Println(slices.Contains(data.Names(), "stripes"))
	n, _ := data.Lookup("stripes")
	train, test, err := n.Load("")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := train.Normalize(n.Mean, n.Std); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %d×%d×%d, %d classes (%s, %s); train %d (nominal %d), test %d\n",
		n.Name, n.C, n.H, n.W, n.Classes, n.ClassNames[0], n.ClassNames[1], train.N, n.NominalN, test.N)
	fmt.Println("first row of a vertical example, normalised:", train.Example(1)[:4])
	// Output:
	// true
	// stripes: 1×4×4, 2 classes (horizontal, vertical); train 100 (nominal 100), test 20
	// first row of a vertical example, normalised: [1 -1 1 -1]
}
