"""The WheelGate CDK app: one compose-only stack and one construct per component."""
