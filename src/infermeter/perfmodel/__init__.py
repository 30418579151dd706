"""Performance model: specs, a calibrated roofline, a serving simulator and a planner.

Everything here is a model (derived figures), never a measurement: label its
outputs "simulated" or "predicted".
"""
