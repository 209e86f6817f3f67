"""RLModule (torch), its NumPy inference form for runners, and what the default model is built from."""
