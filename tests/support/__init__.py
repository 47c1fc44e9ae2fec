"""Helpers shared by the tests: loopback model servers, kernels and workspaces."""
