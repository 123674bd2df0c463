// Inception v3, module by module as in torchvision.models.inception (InceptionA..E). Every
// convolution is torchvision's BasicConv2d: conv without bias + batch norm (gamma, beta) + ReLU.
#include <string>

#include "core/model/model_builders.h"

namespace replisim::core {
namespace {

// BasicConv2d with a kernel_h x kernel_w kernel ("same" padding unless told otherwise).
void basic_conv(CnnBuilder& b, const std::string& name, int out_channels, int kernel_h,
                int kernel_w, int stride = 1, Padding padding = Padding::same()) {
  b.conv(name, out_channels, kernel_h, kernel_w, stride, padding, true);
}

// 35x35 module (Figure 5 with the 5x5 kept, as torchvision does): 64 + 64 + 96 + pool_features.
void inception_a(CnnBuilder& b, const std::string& m, int pool_features) {
  b.concat({
      [&] { basic_conv(b, m + "/branch1x1", 64, 1, 1); },
      [&] {
        basic_conv(b, m + "/branch5x5_1", 48, 1, 1);
        basic_conv(b, m + "/branch5x5_2", 64, 5, 5);
      },
      [&] {
        basic_conv(b, m + "/branch3x3dbl_1", 64, 1, 1);
        basic_conv(b, m + "/branch3x3dbl_2", 96, 3, 3);
        basic_conv(b, m + "/branch3x3dbl_3", 96, 3, 3);
      },
      [&] {
        b.pool(3, 1);  // 3x3 average pool, stride 1, padding 1
        basic_conv(b, m + "/branch_pool", pool_features, 1, 1);
      },
  });
}

// Grid reduction 35x35 -> 17x17 (Figure 10): 384 + 96 + the input channels (max pool).
void inception_b(CnnBuilder& b, const std::string& m) {
  b.concat({
      [&] { basic_conv(b, m + "/branch3x3", 384, 3, 3, 2, Padding::valid()); },
      [&] {
        basic_conv(b, m + "/branch3x3dbl_1", 64, 1, 1);
        basic_conv(b, m + "/branch3x3dbl_2", 96, 3, 3);
        basic_conv(b, m + "/branch3x3dbl_3", 96, 3, 3, 2, Padding::valid());
      },
      [&] { b.pool(3, 2, Padding::valid()); },
  });
}

// 17x17 module with factorised 7x7 convolutions (Figure 6, n = 7): 4 x 192 = 768 channels.
void inception_c(CnnBuilder& b, const std::string& m, int c7) {
  b.concat({
      [&] { basic_conv(b, m + "/branch1x1", 192, 1, 1); },
      [&] {
        basic_conv(b, m + "/branch7x7_1", c7, 1, 1);
        basic_conv(b, m + "/branch7x7_2", c7, 1, 7);
        basic_conv(b, m + "/branch7x7_3", 192, 7, 1);
      },
      [&] {
        basic_conv(b, m + "/branch7x7dbl_1", c7, 1, 1);
        basic_conv(b, m + "/branch7x7dbl_2", c7, 7, 1);
        basic_conv(b, m + "/branch7x7dbl_3", c7, 1, 7);
        basic_conv(b, m + "/branch7x7dbl_4", c7, 7, 1);
        basic_conv(b, m + "/branch7x7dbl_5", 192, 1, 7);
      },
      [&] {
        b.pool(3, 1);  // 3x3 average pool, stride 1, padding 1
        basic_conv(b, m + "/branch_pool", 192, 1, 1);
      },
  });
}

// Grid reduction 17x17 -> 8x8: 320 + 192 + the input channels (max pool).
void inception_d(CnnBuilder& b, const std::string& m) {
  b.concat({
      [&] {
        basic_conv(b, m + "/branch3x3_1", 192, 1, 1);
        basic_conv(b, m + "/branch3x3_2", 320, 3, 3, 2, Padding::valid());
      },
      [&] {
        basic_conv(b, m + "/branch7x7x3_1", 192, 1, 1);
        basic_conv(b, m + "/branch7x7x3_2", 192, 1, 7);
        basic_conv(b, m + "/branch7x7x3_3", 192, 7, 1);
        basic_conv(b, m + "/branch7x7x3_4", 192, 3, 3, 2, Padding::valid());
      },
      [&] { b.pool(3, 2, Padding::valid()); },
  });
}

// 8x8 module with expanded 1x3 / 3x1 filter banks (Figure 7): 320 + 768 + 768 + 192 = 2048.
void inception_e(CnnBuilder& b, const std::string& m) {
  b.concat({
      [&] { basic_conv(b, m + "/branch1x1", 320, 1, 1); },
      [&] {
        basic_conv(b, m + "/branch3x3_1", 384, 1, 1);
        b.concat({[&] { basic_conv(b, m + "/branch3x3_2a", 384, 1, 3); },
                  [&] { basic_conv(b, m + "/branch3x3_2b", 384, 3, 1); }});
      },
      [&] {
        basic_conv(b, m + "/branch3x3dbl_1", 448, 1, 1);
        basic_conv(b, m + "/branch3x3dbl_2", 384, 3, 3);
        b.concat({[&] { basic_conv(b, m + "/branch3x3dbl_3a", 384, 1, 3); },
                  [&] { basic_conv(b, m + "/branch3x3dbl_3b", 384, 3, 1); }});
      },
      [&] {
        b.pool(3, 1);  // 3x3 average pool, stride 1, padding 1
        basic_conv(b, m + "/branch_pool", 192, 1, 1);
      },
  });
}

}  // namespace

Model build_inception_v3(const std::string& name, double bytes_per_element) {
  CnnBuilder b(name, 3, 299, 299, bytes_per_element);
  basic_conv(b, "Conv2d_1a_3x3", 32, 3, 3, 2, Padding::valid());  // 299 -> 149
  basic_conv(b, "Conv2d_2a_3x3", 32, 3, 3, 1, Padding::valid());  // 149 -> 147
  basic_conv(b, "Conv2d_2b_3x3", 64, 3, 3);                       // 147, padding 1
  b.pool(3, 2, Padding::valid());                                 // 147 -> 73
  basic_conv(b, "Conv2d_3b_1x1", 80, 1, 1);
  basic_conv(b, "Conv2d_4a_3x3", 192, 3, 3, 1, Padding::valid());  // 73 -> 71
  b.pool(3, 2, Padding::valid());                                  // 71 -> 35
  inception_a(b, "Mixed_5b", 32);                                  // 256 channels
  inception_a(b, "Mixed_5c", 64);                                  // 288
  inception_a(b, "Mixed_5d", 64);                                  // 288
  inception_b(b, "Mixed_6a");                                      // 768, 17x17
  inception_c(b, "Mixed_6b", 128);
  inception_c(b, "Mixed_6c", 160);
  inception_c(b, "Mixed_6d", 160);
  inception_c(b, "Mixed_6e", 192);
  // torchvision's AuxLogits head would attach here; it is left out (see the header).
  inception_d(b, "Mixed_7a");  // 1280, 8x8
  inception_e(b, "Mixed_7b");  // 2048
  inception_e(b, "Mixed_7c");  // 2048
  b.global_pool();
  b.dense("fc", 1000);
  return b.finish();
}

}  // namespace replisim::core
