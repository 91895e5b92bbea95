// Command hello is a tiny static program the image tests use as a stand-in
// ctrbench binary.
package main

import "fmt"

func main() { fmt.Println("hello") }
