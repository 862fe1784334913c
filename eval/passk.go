package eval

import "math/big"

// PassAtK is the unbiased estimator of pass@k for one problem with n
// samples of which c passed (Chen et al., 2021): 1 - C(n-c, k) / C(n, k).
func PassAtK(n, c, k int) float64 {
	f, _ := passAtK(n, c, k).Float64()
	return f
}

// passAtK computes the estimator exactly, as a rational, so that averages
// over problems are exact too (six samples with three passing give pass@1
// = 0.5, not 0.4999999999999999 as a product of floats does).
func passAtK(n, c, k int) *big.Rat {
	if n-c < k {
		return big.NewRat(1, 1)
	}
	fail := new(big.Rat).SetFrac(new(big.Int).Binomial(int64(n-c), int64(k)), new(big.Int).Binomial(int64(n), int64(k)))
	return fail.Sub(big.NewRat(1, 1), fail)
}
