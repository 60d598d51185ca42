"""A cluster's first contact: the whole bill up front (``vade plan``), hub assets staged into one
offline cache (``vade prefetch``), and each GPU job's first seconds (``vade preflight``)."""
