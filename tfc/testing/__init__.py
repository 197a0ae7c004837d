"""Testing machinery shared by the test suite and the benchmarks: the graph fuzzer
(:mod:`tfc.testing.fuzz`) and its op catalogue (:mod:`tfc.testing.fuzz_ops`)."""
