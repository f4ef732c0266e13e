print("fanout-throughput: not written yet")
