// In the transaction a load holds open while it runs: another load that
// cannot take this lock knows the load is running.
MATCH (r:TogLoadRun {token: $token})
SET r.held = true
