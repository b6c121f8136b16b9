"""Research statistics the product does not run, kept for the benchmarks that compare them."""
