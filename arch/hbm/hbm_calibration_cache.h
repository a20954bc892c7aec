// The on-disk cache of HBM calibrations: the detailed-model figures
// (HbmCalibrationTables) of one HBM config, kept between processes so that
// short runs, `tpusim check`, serve steps and sweep points do not measure
// them again. A figure is a pure function of the config and the HBM model's
// code, so results are bit-identical with and without the cache.
//  - Where: $TPUSIM_CACHE_DIR, else $XDG_CACHE_HOME/tpusim, else
//    $HOME/.cache/tpusim; TPUSIM_NO_CACHE=1 (any value but "" and "0")
//    turns it off.
//  - One file per config, named by a hash of the format version, the HBM
//    model's source hash (every file of arch/hbm and arch/common, hashed at
//    build time) and hbm_calibration_key() (every calibrated field of
//    TPUSIM_HBM_FIELDS, the list that declares HbmConfig). The file repeats
//    the version, source hash and whole key: any mismatch, a malformed line
//    or a missing end line (its entry count) and the file is ignored and
//    the figures measured again, never trusted.
//  - Written whole to a temporary file in the same folder and renamed over
//    the old one, so parallel processes never read half a file; a process
//    merges what the file holds at that moment with its own figures.
// Leaves out: locking (two processes saving at once: the last rename wins,
// the other's new figures are measured again next time); eviction.
#pragma once

#include <string>

#include "arch/hbm/hbm_calibration.h"

namespace tpusim::arch {

inline constexpr int kHbmCalibrationFormat = 1;

// The cache folder from the environment; "" when the cache is off.
std::string hbm_calibration_cache_dir();
// The file for a config's calibration key; "" when the cache is off.
std::string hbm_calibration_cache_path(const std::string& key);

// Adds the figures of the file at `path` that `t` does not hold yet
// (uncounted). Returns false, leaving `t` unchanged, when the file is
// missing, malformed, truncated or for another format, model or key.
bool load_hbm_calibration(const std::string& path, const std::string& key, HbmCalibrationTables& t);
// Merges `t` with the file's valid figures and replaces the file
// atomically. Returns false (the cache is an optimisation: no error) when
// the folder or file cannot be written.
bool save_hbm_calibration(const std::string& path, const std::string& key, const HbmCalibrationTables& t);

}  // namespace tpusim::arch
