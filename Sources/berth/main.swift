print("berth")
