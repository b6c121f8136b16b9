"""Signed reports: a verdict as a compact JWS that anyone can re-verify offline."""
