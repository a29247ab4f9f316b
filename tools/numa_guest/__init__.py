"""A multi-node Linux guest under QEMU for placement tests (see guest.py)."""
