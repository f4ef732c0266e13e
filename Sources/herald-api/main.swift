print("herald-api")
