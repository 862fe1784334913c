package eval

// PassAtK is the unbiased estimator of pass@k for one problem with n
// samples of which c passed (Chen et al., 2021):
// 1 - C(n-c, k) / C(n, k), computed as a product to stay exact for large n.
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}
