"""trusteval: measure how trustworthy a large language model is (TrustGPT and TrustEval, end to end)."""

__version__ = "0.1.0"
