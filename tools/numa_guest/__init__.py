"""A multi-node Linux guest under QEMU for placement tests: image.py builds it, guest.py boots it."""
