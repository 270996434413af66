"""WheelGate: gated promotion of CI-built Python wheels from staging to a nightly index."""

__version__ = "1.0.0"
