# %%
import statistics
readings = [12.1, 12.4, 11.9, 12.8, 13.0]
# %%
mean = statistics.mean(readings)
mean
# %%
readings.append(14.2)
round(statistics.mean(readings) - mean, 3)
# %%
:ls
