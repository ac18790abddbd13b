"""The wire: every served version of the generic APIs, bad input, fuzzing, and what one request may cost."""
