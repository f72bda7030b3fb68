"""Load drivers: small client programs a worker starts as child processes (their CPU is the client's)."""
