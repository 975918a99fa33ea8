package skills

import "io"

var errEOF = io.EOF
