"""WheelGate: gated promotion of CI-built Python wheels from staging to a nightly index."""

__version__ = "0.1.0"
