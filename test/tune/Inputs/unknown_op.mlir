// Not a valid model: an op the het dialect does not have (het-tune names
// the line).
func.func @f(%x: tensor<2xf32>) {
  %y = het.bogus %x
}
