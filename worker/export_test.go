package worker

// LeaseExpired exports leaseExpired for the table test.
var LeaseExpired = leaseExpired
