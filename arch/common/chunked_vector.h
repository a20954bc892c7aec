// A vector of fixed-size chunks: indexing costs one more load than
// std::vector, but growing never moves what is stored. A lowered program
// holds tens of millions of instructions (Llama 3 70B training at 4
// sequences of 8192 tokens per chip: about 90 M, 88 bytes each); growing
// one std::vector to that size copies it through every reallocation, and
// the last copy needs the old and the new block at once (twice the
// program), which is what ran a 24 GiB machine out of memory. Chunks of
// 2^Shift elements are reserved as they are needed (untouched capacity
// costs address space only) and stay where they are.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace tpusim::arch {

template <typename T, unsigned Shift = 16>
class ChunkedVector {
 public:
  static constexpr std::size_t kChunk = std::size_t{1} << Shift;

  template <typename V, typename Ref>
  class Iter {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::remove_reference_t<Ref>*;
    using reference = Ref;
    Iter() = default;
    Iter(V* v, std::size_t i) : v_(v), i_(i) {}
    Ref operator*() const { return (*v_)[i_]; }
    pointer operator->() const { return &(*v_)[i_]; }
    Ref operator[](difference_type n) const { return (*v_)[i_ + static_cast<std::size_t>(n)]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    Iter operator++(int) {
      Iter t = *this;
      ++i_;
      return t;
    }
    Iter& operator--() {
      --i_;
      return *this;
    }
    Iter operator--(int) {
      Iter t = *this;
      --i_;
      return t;
    }
    Iter& operator+=(difference_type n) {
      i_ = static_cast<std::size_t>(static_cast<difference_type>(i_) + n);
      return *this;
    }
    Iter& operator-=(difference_type n) { return *this += -n; }
    friend Iter operator+(Iter a, difference_type n) { return a += n; }
    friend Iter operator+(difference_type n, Iter a) { return a += n; }
    friend Iter operator-(Iter a, difference_type n) { return a -= n; }
    friend difference_type operator-(const Iter& a, const Iter& b) {
      return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
    }
    friend bool operator==(const Iter& a, const Iter& b) { return a.i_ == b.i_; }
    friend bool operator!=(const Iter& a, const Iter& b) { return a.i_ != b.i_; }
    friend bool operator<(const Iter& a, const Iter& b) { return a.i_ < b.i_; }
    friend bool operator>(const Iter& a, const Iter& b) { return a.i_ > b.i_; }
    friend bool operator<=(const Iter& a, const Iter& b) { return a.i_ <= b.i_; }
    friend bool operator>=(const Iter& a, const Iter& b) { return a.i_ >= b.i_; }

   private:
    V* v_ = nullptr;
    std::size_t i_ = 0;
  };
  using iterator = Iter<ChunkedVector, T&>;
  using const_iterator = Iter<const ChunkedVector, const T&>;
  using value_type = T;
  using size_type = std::size_t;

  ChunkedVector() = default;
  ChunkedVector(std::initializer_list<T> init) { *this = init; }
  ChunkedVector& operator=(std::initializer_list<T> init) {
    clear();
    for (const T& x : init) push_back(x);
    return *this;
  }

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return chunks_[i >> Shift][i & (kChunk - 1)]; }
  const T& operator[](std::size_t i) const { return chunks_[i >> Shift][i & (kChunk - 1)]; }
  T& at(std::size_t i) { return (*this)[checked(i)]; }
  const T& at(std::size_t i) const { return (*this)[checked(i)]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  void push_back(const T& x) {
    if ((size_ & (kChunk - 1)) == 0 && (size_ >> Shift) == chunks_.size()) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);
    }
    chunks_[size_ >> Shift].push_back(x);
    ++size_;
  }
  // Reserves the table of chunks only: the chunks come as they fill.
  void reserve(std::size_t n) { chunks_.reserve((n + kChunk - 1) >> Shift); }
  void clear() {
    chunks_.clear();
    size_ = 0;
  }

  iterator begin() { return {this, 0}; }
  iterator end() { return {this, size_}; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size_}; }

 private:
  std::size_t checked(std::size_t i) const {
    if (i >= size_)
      throw std::out_of_range("ChunkedVector: index " + std::to_string(i) + " of " + std::to_string(size_));
    return i;
  }
  std::vector<std::vector<T>> chunks_;
  std::size_t size_ = 0;
};

}  // namespace tpusim::arch
