"""diffill.kernels"""
