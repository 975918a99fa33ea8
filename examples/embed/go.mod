module github.com/odekrun/odek/examples/embed

go 1.26.8

require github.com/odekrun/odek v0.0.0

require (
	github.com/sirupsen/logrus v1.10.2 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace github.com/odekrun/odek => ../..
